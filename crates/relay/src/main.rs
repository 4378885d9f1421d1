fn main() {
    println!("capelab-relay: under construction");
}
