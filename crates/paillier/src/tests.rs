use chacha20::ChaCha20Rng;
use rand_core::SeedableRng;

use crate::{Ciphertext, KeySize, Keypair, Packing, PaillierError, PublicKey};

fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

fn demo_key(seed: u64) -> Keypair {
    Keypair::generate(KeySize::Demo1024, &mut rng(seed))
}

#[test]
fn signed_values_round_trip() {
    let k = demo_key(1);
    let mut r = rng(2);
    for m in [0, 1, -1, 42, -42, i64::MAX, i64::MIN + 1, 1 << 52, -(1 << 52)] {
        let c = k.public.encrypt_i64(m, &mut r);
        assert_eq!(k.secret.decrypt_i64(&c).unwrap(), m, "{m}");
    }
}

#[test]
fn a_2048_bit_key_round_trips_and_adds() {
    let k = Keypair::generate(KeySize::Standard2048, &mut rng(3));
    assert_eq!(k.public.bits(), 2048);
    let mut r = rng(4);
    let a = k.public.encrypt_i64(-123_456_789, &mut r);
    let b = k.public.encrypt_i64(987_654_321, &mut r);
    assert_eq!(k.secret.decrypt_i64(&k.public.add(&a, &b)).unwrap(), 864_197_532);
}

#[test]
fn sums_of_mixed_signs_decrypt_to_the_sum() {
    let k = demo_key(5);
    let mut r = rng(6);
    let values: Vec<i64> =
        (0..20).map(|i| (i * 7919 - 50_000) * if i % 3 == 0 { -1 } else { 1 }).collect();
    let cts: Vec<Ciphertext> = values.iter().map(|&v| k.public.encrypt_i64(v, &mut r)).collect();
    assert_eq!(k.secret.decrypt_i64(&k.public.sum(&cts)).unwrap(), values.iter().sum::<i64>());
    assert_eq!(k.secret.decrypt_i64(&k.public.sum(std::iter::empty())).unwrap(), 0);
}

#[test]
fn two_encryptions_of_one_value_differ() {
    let k = demo_key(7);
    let mut r = rng(8);
    let a = k.public.encrypt_i64(5, &mut r);
    let b = k.public.encrypt_i64(5, &mut r);
    assert_ne!(a, b, "fresh r per ciphertext");
    assert_eq!(k.secret.decrypt_i64(&a).unwrap(), k.secret.decrypt_i64(&b).unwrap());
}

#[test]
fn malformed_and_foreign_ciphertexts_are_refused() {
    let k = demo_key(9);
    let zero = Ciphertext::from_be_bytes(&[0]).unwrap();
    assert!(matches!(k.public.check(&zero), Err(PaillierError::NotACiphertext { .. })));
    let huge = Ciphertext::from_be_bytes(&[0xff; 256]).unwrap();
    let err = k.secret.decrypt_i64(&huge).unwrap_err();
    assert!(err.to_string().contains("not below n²"), "{err}");
    // A 2048-bit key's ciphertext is almost surely ≥ this 1024-bit key's n².
    let big = Keypair::generate(KeySize::Standard2048, &mut rng(10));
    let foreign = big.public.encrypt_i64(1, &mut rng(11));
    assert!(k.public.check(&foreign).is_err());
    // A multiple of a prime factor of n.
    let p_multiple = Ciphertext(crypto_bigint::Resize::resize(&k.secret.p, 2048));
    assert!(k.public.check(&p_multiple).unwrap_err().to_string().contains("shares a factor"));
    // Too long on the wire.
    assert!(Ciphertext::from_be_bytes(&[1; 1100]).is_err());
}

#[test]
fn key_sizes_are_checked() {
    assert!(matches!(
        PublicKey::from_modulus_decimal("1000001"),
        Err(PaillierError::KeySize { bits: 20 })
    ));
    let even = "1".to_string() + &"0".repeat(308); // 10^308: 1024 bits, even
    assert!(matches!(PublicKey::from_modulus_decimal(&even), Err(PaillierError::EvenModulus)));
    assert!(PublicKey::from_modulus_decimal("12x").is_err());
    let k = demo_key(12);
    let again = PublicKey::from_modulus_decimal(&k.public.modulus_decimal()).unwrap();
    assert_eq!(again, k.public);
    // A key from one prime twice (n = p²) is refused by name.
    let (p, _) = k.primes_decimal();
    assert!(matches!(Keypair::from_primes_decimal(&p, &p), Err(PaillierError::BadPrimes(_))));
}

#[test]
fn keys_and_ciphertexts_survive_json_and_postcard() {
    let k = demo_key(13);
    let c = k.public.encrypt_i64(-77, &mut rng(14));
    let json = serde_json::to_string(&(&k.public, &c)).unwrap();
    let (pk, c2): (PublicKey, Ciphertext) = serde_json::from_str(&json).unwrap();
    assert_eq!(pk, k.public);
    assert_eq!(k.secret.decrypt_i64(&c2).unwrap(), -77);
    let bytes = postcard::to_allocvec(&(&k.public, &c)).unwrap();
    let (pk, c3): (PublicKey, Ciphertext) = postcard::from_bytes(&bytes).unwrap();
    assert_eq!(pk, k.public);
    assert_eq!(c3, c);
}

#[test]
fn packed_sums_decode_slot_by_slot() {
    let k = demo_key(15);
    let bound = 1u64 << 52;
    let packing = Packing::new(bound, 8, 1024).unwrap();
    assert_eq!(packing.slots(), 15); // (1024 − 8) / 64
    let mut r = rng(16);
    let rows: Vec<Vec<i64>> = (0..8)
        .map(|i| (0..15).map(|s| ((i * 31 + s * 17) as i64 - 100) * (bound as i64 / 400)).collect())
        .collect();
    let cts: Vec<Ciphertext> =
        rows.iter().map(|row| k.public.encrypt_packed(row, &packing, &mut r).unwrap()).collect();
    let sums = k.secret.decrypt_packed(&k.public.sum(&cts), &packing, 8).unwrap();
    for s in 0..15 {
        assert_eq!(sums[s], rows.iter().map(|row| row[s]).sum::<i64>(), "slot {s}");
    }
    // Extremes in every slot, and a short row (unused slots decode to 0).
    let ends = vec![bound as i64, -(bound as i64), 0];
    let c = k.public.encrypt_packed(&ends, &packing, &mut r).unwrap();
    let back = k.secret.decrypt_packed(&c, &packing, 1).unwrap();
    assert_eq!(&back[..3], &ends[..]);
    assert!(back[3..].iter().all(|&v| v == 0));
    // Bad input.
    assert!(matches!(
        k.public.encrypt_packed(&[bound as i64 + 1], &packing, &mut r),
        Err(PaillierError::ValueOverBound { .. })
    ));
    assert!(matches!(
        k.public.encrypt_packed(&[0; 16], &packing, &mut r),
        Err(PaillierError::TooManySlots { .. })
    ));
    assert!(matches!(
        k.secret.decrypt_packed(&c, &packing, 9),
        Err(PaillierError::Summands { .. })
    ));
    let other = Packing::new(bound, 8, 2048).unwrap();
    assert!(matches!(
        k.public.encrypt_packed(&[1], &other, &mut r),
        Err(PaillierError::PackingKeyMismatch { .. })
    ));
    // A plain (unpacked) ciphertext of −1 is no sum of packed plaintexts.
    let minus = k.public.encrypt_i64(-1, &mut r);
    assert!(k.secret.decrypt_packed(&minus, &packing, 1).is_err());
}

#[test]
fn a_plaintext_too_large_for_i64_is_named() {
    let k = demo_key(17);
    let mut r = rng(18);
    let big = k.public.encrypt_i64(i64::MAX, &mut r);
    let err = k.secret.decrypt_i64(&k.public.add(&big, &big)).unwrap_err();
    assert!(err.to_string().contains("does not fit in i64"), "{err}");
}

#[test]
fn precomputed_randomizers_encrypt_correctly() {
    let k = demo_key(19);
    let mut r = rng(20);
    let pre = k.public.precompute(&mut r);
    let c = k.public.encrypt_i64_with(-9, pre);
    assert_eq!(k.secret.decrypt_i64(&c).unwrap(), -9);
}
