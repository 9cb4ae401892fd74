//! The clinical application's own services over an in-memory store.
//!
//! Every service takes the caller's [`Principal`](agents_runtime::Principal) and applies the
//! application's rules: the module permission, tenant scoping by `org_id`, athlete
//! self-scoping by the principal's linked subject, and the three return-to-play sign-off
//! permissions gated field by field.
//! The agent's tools call these services with the run's principal and add no checks of their
//! own: authority is inherited.
//!
//! There is no delete for a clinical record here either: athletes are deactivated, injuries
//! are resolved, return-to-play entries and screenings are kept. Videos are the only thing
//! the application destroys.
//!
//! The records are in `records`, the store and the rules every service applies in `access`,
//! each service in the file of its topic, and the seeded data in `seed`.

mod access;
mod athletes;
mod devices;
mod injuries;
mod inspect;
mod records;
mod rtp;
mod screenings;
mod seed;
mod videos;
mod wellness;
mod workload;

pub use crate::service::ServiceError;
pub use access::Store;
pub use records::{
    Acwr, Athlete, Device, Injury, Organisation, PoseMetric, RtpEntry, Screening, Session, SignOff, TODAY, Video,
    Vitals, Wellness,
};
