#![no_main]
// See kspaces_apiserver::fuzzing::selector for what the input means and what is checked.
libfuzzer_sys::fuzz_target!(|data: &[u8]| kspaces_apiserver::fuzzing::selector(data));
