use agents_runtime::{NetAccess, tool};

/// Looks up an exchange rate.
#[tool(permission = public, policy(net(hosts = ["api.example.com/rates"])))]
async fn exchange_rate(net: NetAccess, currency: String) -> Result<String, String> {
    net.check_url("https://api.example.com/rates").map_err(|e| e.to_string())?;
    Ok(currency)
}

fn main() {}
