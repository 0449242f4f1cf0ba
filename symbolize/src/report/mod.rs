//! Views of a symbolized profile.

pub mod aggregate;
pub mod collapsed;
pub mod json;
pub mod located;
pub mod otlp;
pub mod pprof;
pub mod text;
pub mod weight;

pub use aggregate::{Aggregate, Filter, FrameKey, Kind, Names, Weight};
