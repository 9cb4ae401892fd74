//! The store itself, and the rules every service applies before it reads or writes: the
//! module permission, tenant scoping, and an athlete-role user narrowed to their own record.

use super::records::*;
use super::seed::seed;
use crate::service::ServiceError;
use agents_runtime::Principal;
use std::sync::{LazyLock, Mutex, MutexGuard};

pub(super) type Result<T> = std::result::Result<T, ServiceError>;

/// The application's store and services.
#[derive(Debug)]
pub struct Store {
    data: Mutex<Data>,
}

static GLOBAL: LazyLock<Store> = LazyLock::new(Store::seeded);

pub(super) fn has(p: &Principal, permission: &str) -> bool {
    crate::clinic::roles().has_permission(&p.role, permission)
}

pub(super) fn require(p: &Principal, permission: &str) -> Result<()> {
    if has(p, permission) {
        Ok(())
    } else {
        Err(ServiceError::Forbidden(format!("role `{}` does not hold `{permission}`", p.role)))
    }
}

pub(super) fn is_athlete(p: &Principal) -> bool {
    p.role == crate::clinic::ATHLETE
}

/// A record that belongs to one athlete.
pub(super) trait AthleteRecord: Clone {
    fn athlete_id(&self) -> &str;
}

/// An athlete's record with an id of its own, looked up by it within a tenant.
pub(super) trait KeyedRecord: AthleteRecord {
    fn id(&self) -> &str;
    fn org_id(&self) -> &str;
}

macro_rules! impl_athlete_record {
    ($($record:ty),*) => {$(
        impl AthleteRecord for $record {
            fn athlete_id(&self) -> &str {
                &self.athlete_id
            }
        }
    )*};
}

macro_rules! impl_keyed_record {
    ($($record:ty),*) => {$(
        impl KeyedRecord for $record {
            fn id(&self) -> &str {
                &self.id
            }

            fn org_id(&self) -> &str {
                &self.org_id
            }
        }
    )*};
}

impl_athlete_record!(Injury, Wellness, Vitals, Session, RtpEntry, Screening, Video, Device);
impl_keyed_record!(Injury, RtpEntry, Video, Device);

impl Store {
    /// The application's store, seeded once per process (what the tools use).
    pub fn global() -> &'static Store {
        &GLOBAL
    }

    /// A new store with the seeded organisations, athletes and records.
    pub fn seeded() -> Store {
        Store { data: Mutex::new(seed()) }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Data> {
        self.data.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The athlete as the caller may see it: same tenant, and for an athlete-role user only
    /// their own linked record (an unlinked athlete account is refused).
    pub(super) fn scoped_athlete<'d>(d: &'d Data, p: &Principal, athlete_id: &str) -> Result<&'d Athlete> {
        if is_athlete(p) {
            match &p.subject {
                None => {
                    return Err(ServiceError::Forbidden(
                        "this athlete account is not linked to an athlete record".into(),
                    ));
                }
                Some(own) if own != athlete_id => {
                    return Err(ServiceError::Forbidden("athletes can only access their own record".into()));
                }
                Some(_) => {}
            }
        }
        d.athletes
            .iter()
            .find(|a| a.id == athlete_id && a.org_id == p.org_id)
            .ok_or_else(|| ServiceError::NotFound(format!("athlete `{athlete_id}`")))
    }

    /// The records of one athlete in `records(d)` that pass `keep`, once the caller holds
    /// `permission` and may see the athlete.
    pub(super) fn athlete_records<T: AthleteRecord>(
        &self,
        p: &Principal,
        permission: &str,
        athlete_id: &str,
        records: impl FnOnce(&Data) -> &Vec<T>,
        keep: impl Fn(&T) -> bool,
    ) -> Result<Vec<T>> {
        require(p, permission)?;
        let d = self.lock();
        Self::scoped_athlete(&d, p, athlete_id)?;
        Ok(records(&d).iter().filter(|r| r.athlete_id() == athlete_id && keep(r)).cloned().collect())
    }

    /// Where record `id` (a `what`) of the caller's organisation stands in `records`, once the
    /// caller may see its athlete.
    pub(super) fn record_index<T: KeyedRecord>(
        d: &Data,
        p: &Principal,
        records: &[T],
        id: &str,
        what: &str,
    ) -> Result<usize> {
        let index = records
            .iter()
            .position(|r| r.id() == id && r.org_id() == p.org_id)
            .ok_or_else(|| ServiceError::NotFound(format!("{what} `{id}`")))?;
        Self::scoped_athlete(d, p, records[index].athlete_id())?;
        Ok(index)
    }

    pub(super) fn next_id(d: &mut Data, prefix: &str) -> String {
        d.next_id += 1;
        format!("{prefix}-{}", d.next_id)
    }
}
