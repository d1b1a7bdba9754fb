#![no_main]
// See kspaces_apiserver::fuzzing::request_line for what the input means and what is checked.
libfuzzer_sys::fuzz_target!(|data: &[u8]| kspaces_apiserver::fuzzing::request_line(data));
