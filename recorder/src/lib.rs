//! The flightrec runtime (see the issues for what lands here).
