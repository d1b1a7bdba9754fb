#![no_main]
// See kspaces_apiserver::fuzzing::patch for what the input means and what is checked.
libfuzzer_sys::fuzz_target!(|data: &[u8]| kspaces_apiserver::fuzzing::patch(data));
