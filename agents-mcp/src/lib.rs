#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod composite;
pub mod door;
mod http;
pub mod import;
pub mod listener;
mod options;
mod second;
mod server;
mod stdio;
mod strict;

pub use composite::{COMPOSITE_FIELD_INPUT, COMPOSITE_FIELD_OUTPUT, CompositeServer, serve_composite_io};
pub use door::{CompositeTree, DEFAULT_MAX_BODY_BYTES, FrontDoor, FrontDoorOptions, Origins, ResponseBody, Served};
pub use http::{HttpLimits, HttpServer, McpHttpOptions, serve_composite_http, serve_http};
pub use import::{ImportError, ImportSource, McpImports, pin_server};
pub use options::{DEFAULT_ELICITATION_TIMEOUT, DEFAULT_MAX_FRAME_BYTES, McpError, McpOptions};
pub use server::{ClientGone, ClientGoneBody, McpServer};
pub use stdio::{serve_io, serve_stdio};
pub use strict::{INVALID_REQUEST, strict_refusal};
