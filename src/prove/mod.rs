//! Proving a stack: the example's own report, GPU memory sampled from outside, and the plot.
//!
//! This half measures and reads; running the example inside the stack's environment and writing
//! the record (`crate::record`) are wired in by the `prove` command. Installing is not its job.

pub mod result_line;
pub mod sampler;
pub mod svg;

pub use result_line::{
    ExampleReport, FrameworkCounter, RESULT_PREFIX, ResultLineError, parse_output,
};
pub use sampler::{MemorySource, MemoryTrace, ProcessTree, Sampler, SamplerError};
