//! Any input to `read_recording` must end in `Ok` or `Err`: no panic, no
//! hang, no allocation beyond a bound linear in the input.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(file) = jfr_format::read::read_recording(data) {
        // Walk the result so none of the decoding is optimised away.
        let fields: usize = file.events().map(|e| e.fields.len()).sum();
        std::hint::black_box(fields);
    }
});
