//! A heartbeat's form, as the dashboard's registry reads it. Never a panic; a registration that is
//! accepted, written out again as a form, reads back the same.

#![no_main]

use floodgate_dashboard::registry::parse_heartbeat;
use libfuzzer_sys::fuzz_target;

fn params(form: &[u8]) -> Vec<(String, String)> {
    form_urlencoded::parse(form)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let Ok(registration) = parse_heartbeat(&params(data)) else {
        return;
    };
    let mut form = form_urlencoded::Serializer::new(String::new());
    form.append_pair("app", &registration.app)
        .append_pair("app_type", &registration.app_type.to_string())
        .append_pair("hostname", &registration.hostname)
        .append_pair("ip", &registration.ip.to_string())
        .append_pair("port", &registration.port.to_string())
        .append_pair("v", &registration.sentinel_version);
    if let Some(token) = &registration.token {
        form.append_pair("token", token);
    }
    let again = parse_heartbeat(&params(form.finish().as_bytes()))
        .unwrap_or_else(|e| panic!("an accepted registration, written out, was refused: {e:?}"));
    assert_eq!(again, registration);
});
