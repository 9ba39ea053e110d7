//! Per-tenant fair share on this replica: the gate in front of the pipeline, the fair queue and the counters it decides from.

pub mod limits;
pub mod queue;
