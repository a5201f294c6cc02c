//! `watch`'s and `status`'s flags.

use crate::client::SidecarArgs;
use clap::Args;

/// `evolve-hud watch`.
#[derive(Debug, Clone, Args)]
pub struct WatchArgs {
    #[command(flatten)]
    pub sidecar: SidecarArgs,
}

/// `evolve-hud status`.
#[derive(Debug, Clone, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub sidecar: SidecarArgs,

    /// Print `GET /v1/status` as JSON instead of text.
    #[arg(long)]
    pub json: bool,
}
