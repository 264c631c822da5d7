#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolwarden::fuzzing::config_file(data));
