//! Compile tests for the agents macros.
