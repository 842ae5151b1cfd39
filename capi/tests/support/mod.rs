//! Finding `libflightrec.so`/`.a` and compiling C and C++ programs against
//! them with the system compiler.

#![allow(dead_code)]

mod build;
mod paths;

pub(crate) use build::*;
pub(crate) use paths::*;
