pub mod dapl;
pub mod preload;
pub mod private_net;
