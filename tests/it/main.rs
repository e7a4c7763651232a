//! The integration suite, one binary (each separate test binary re-links everything, which on
//! 2 cores costs more than the tests): a module per concern, all running the real `polymorph`
//! binary on real tasks, real git ledgers, real runs.db files and real HTTP servers on loopback.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod adversarial;
mod agent;
mod agent_focused;
mod agent_models;
mod capacity_ramp;
mod cluster;
mod common;
mod cpu_tasks;
mod cycles;
mod docs;
mod faults;
mod gpu;
mod import;
mod knobs;
mod layers;
mod layout;
mod llm_serve;
mod lying_worker;
mod machine_bound;
mod objective;
mod polymorphic;
mod postgres;
mod postgres_query;
mod request_logs;
mod resume;
mod review;
mod round_seed;
mod run_cli;
mod sandbox_edges;
mod secrets;
mod serve;
mod serving;
mod simulate;
mod slow_models;
mod task_reference;
mod trust;
mod trust_records;
mod vllm_serve;
