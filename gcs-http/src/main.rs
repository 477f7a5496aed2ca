//! `slotlog-gcs-http`: the simulated GCS on a loopback port (see the library docs).
//! Prints `listening on http://ADDR` once it accepts connections.

use clap::Parser;
use slotlog_gcs_http::{Config, Server};

/// Serve the simulated GCS over GCS's XML API.
#[derive(Parser, Debug)]
#[command(name = "slotlog-gcs-http")]
struct Args {
    /// The address to listen on (port 0: a free one).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: String,
    /// The one bucket served.
    #[arg(long, default_value = "slotlog-test")]
    bucket: String,
    /// Seeds the fault draws.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// GCS's one mutation per name per interval; 0 turns the limit off.
    #[arg(long, default_value_t = 1_000)]
    name_update_interval_ms: u64,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let mut config = Config::new(args.bucket);
    config.seed = args.seed;
    config.name_update_interval = (args.name_update_interval_ms > 0)
        .then(|| std::time::Duration::from_millis(args.name_update_interval_ms));
    let server = Server::new(config)?;
    let listener = tokio::net::TcpListener::bind(&args.listen).await?;
    println!("listening on http://{}", listener.local_addr()?);
    server.serve(listener).await?;
    Ok(())
}
