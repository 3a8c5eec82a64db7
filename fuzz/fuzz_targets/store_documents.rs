//! Store documents from disk or a user: a model record and a catalog. Parsing never panics;
//! a record that parses writes back to text that parses to the same record.
#![no_main]

use std::path::Path;

use gpuport_store::Catalog;
use gpuport_store::record::ModelRecord;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(record) = ModelRecord::parse(text, Path::new("fuzz.json")) {
        let again = ModelRecord::parse(&record.to_json(), Path::new("again.json"));
        assert_eq!(again.ok(), Some(record));
    }
    let _ = Catalog::parse(text, Path::new("fuzz.json"));
});
