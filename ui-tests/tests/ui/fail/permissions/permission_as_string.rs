use agents_runtime::permissions;

permissions! {
    pub mod perms {
        "athlete.read",
    }
}

fn main() {}
