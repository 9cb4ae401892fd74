//! Runnable agents from the seeds.
