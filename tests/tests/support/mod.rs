pub mod preload;
