#[floodgate::resource(name = "config")]
struct Config {
    limit: u32,
}

fn main() {}
