//! Starting to answer `jcmd` as a recording's `attach` option asks: now,
//! or at the first `jcmd`'s SIGQUIT.

use super::listener::listen;
use super::sigquit::listen_on_sigquit;
use crate::config::builder::Attach;

/// Starts answering `jcmd` as `mode` says (see [`Attach`]).
pub(crate) fn start(mode: Attach) -> std::io::Result<()> {
    match mode {
        Attach::Off => Ok(()),
        Attach::Listen => listen().map(drop),
        Attach::OnSigquit => listen_on_sigquit(),
    }
}
