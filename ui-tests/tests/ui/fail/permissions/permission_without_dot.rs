use agents_runtime::permissions;

permissions! {
    pub mod perms {
        athlete_read,
    }
}

fn main() {}
