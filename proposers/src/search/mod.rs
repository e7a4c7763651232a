//! Seeded parameter search: the space with the hill and random strategies (`space.rs`), TPE
//! (the default), the model search and its features, races, and what the judge could accept of
//! each measured assignment.

pub(crate) mod features;
pub(crate) mod model;
pub(crate) mod race;
pub(crate) mod sample;
pub(crate) mod scoring;
pub(crate) mod space;
pub(crate) mod surrogate;
pub(crate) mod tpe;
pub(crate) mod tuning;
pub(crate) mod widen;
