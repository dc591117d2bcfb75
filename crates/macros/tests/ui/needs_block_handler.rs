#[floodgate::resource(name = "count")]
fn count() -> u32 {
    1
}

fn main() {}
