//! `#[derive(Event)]` for flightrec.
