//! Devices: listed, paired, and their keys rotated.

use super::access::*;
use super::records::*;
use crate::clinic::perms;
use crate::service::ServiceError;
use agents_runtime::Principal;

impl Store {
    /// Devices paired to an athlete.
    pub fn list_devices(&self, p: &Principal, athlete_id: &str) -> Result<Vec<Device>> {
        self.athlete_records(p, perms::device::manage::NAME, athlete_id, |d| &d.devices, |_| true)
    }

    /// Replaces a device's key; the old key stops working.
    pub fn rotate_device_key(&self, p: &Principal, device_id: &str) -> Result<Device> {
        require(p, perms::device::manage::NAME)?;
        let mut d = self.lock();
        let index = Self::record_index(&d, p, &d.devices, device_id, "device")?;
        let dev = &mut d.devices[index];
        dev.key_version += 1;
        let digest =
            agents_runtime::agents_core::canonical::sha256_hex(format!("{}:{}", dev.id, dev.key_version).as_bytes());
        dev.key_fingerprint = format!("SHA256:{}", &digest[..16]);
        Ok(dev.clone())
    }

    /// Pairs a new device with an athlete. The code the device shows on its screen proves the
    /// person holds it; only a fingerprint derived from it is kept, never the code.
    pub fn pair_device(&self, p: &Principal, athlete_id: &str, model: &str, pairing_code: &str) -> Result<Device> {
        require(p, perms::device::manage::NAME)?;
        if pairing_code.len() != 6 || !pairing_code.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ServiceError::Invalid("a pairing code is the 6 digits the device shows".into()));
        }
        if model.trim().is_empty() {
            return Err(ServiceError::Invalid("name the device's model".into()));
        }
        let mut d = self.lock();
        Self::scoped_athlete(&d, p, athlete_id)?;
        let id = Self::next_id(&mut d, "dev");
        let digest = agents_runtime::agents_core::canonical::sha256_hex(format!("{id}:{pairing_code}").as_bytes());
        let dev = Device {
            id,
            org_id: p.org_id.clone(),
            athlete_id: athlete_id.to_owned(),
            model: model.trim().to_owned(),
            key_fingerprint: format!("SHA256:{}", &digest[..16]),
            key_version: 1,
        };
        d.devices.push(dev.clone());
        Ok(dev)
    }
}
