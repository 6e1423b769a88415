pub mod dapl;
pub mod preload;
