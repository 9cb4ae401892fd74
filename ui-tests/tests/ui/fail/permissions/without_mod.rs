use agents_runtime::permissions;

permissions! {
    perms {
        athlete.read,
    }
}

fn main() {}
