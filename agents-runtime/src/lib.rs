#![doc = include_str!("../README.md")]

pub mod audit;
pub mod provider;

pub use agents_core as core;
