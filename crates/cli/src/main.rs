use clap::Parser;

/// cape: capelab's protocols, natively.
#[derive(Parser)]
#[command(name = "cape", version, about)]
struct Cli {}

fn main() {
    let _ = Cli::parse();
}
