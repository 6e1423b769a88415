//! mlx5
