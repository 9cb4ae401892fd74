//! Videos: listed, read, and the only records the application deletes.

use super::access::*;
use super::records::*;
use crate::clinic::perms;
use agents_runtime::Principal;

impl Store {
    /// Videos of one athlete (without metrics).
    pub fn list_videos(&self, p: &Principal, athlete_id: &str) -> Result<Vec<Video>> {
        self.athlete_records(p, perms::video::read::NAME, athlete_id, |d| &d.videos, |_| true)
    }

    /// One video with its pose metrics and the conditions they were measured under.
    pub fn get_video(&self, p: &Principal, video_id: &str) -> Result<Video> {
        require(p, perms::video::read::NAME)?;
        let d = self.lock();
        let v = Self::record_index(&d, p, &d.videos, video_id, "video")?;
        Ok(d.videos[v].clone())
    }

    /// Permanently deletes videos and their pose analyses. Cannot be undone.
    pub fn delete_videos(&self, p: &Principal, video_ids: &[String]) -> Result<Vec<String>> {
        require(p, perms::video::delete::NAME)?;
        let mut d = self.lock();
        for id in video_ids {
            Self::record_index(&d, p, &d.videos, id, "video")?;
        }
        d.videos.retain(|v| !video_ids.contains(&v.id));
        Ok(video_ids.to_vec())
    }
}
