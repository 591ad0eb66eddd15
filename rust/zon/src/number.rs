//! Number literals, accepted and refused exactly as Zig's
//! `std.zig.number_literal` does (checked against `zig ast-check --zon` in the
//! oracle tests), with the value computed for the deserializer.

/// A parsed number literal, before any sign.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Number {
    /// An integer; `None` when it needs more than 128 bits (Zig accepts any
    /// size, so the refusal waits until a type asks for the value).
    Int(Option<u128>),
    Float(f64),
}

/// How far a number token runs from `start`, by Zig's tokenizer rules: letters,
/// digits and `_`; one `.` into a fraction when a digit-like byte follows; a
/// sign straight after an exponent letter.
pub(crate) fn token_end(src: &[u8], start: usize) -> usize {
    let body = |b: u8| b == b'_' || b.is_ascii_alphanumeric();
    let exponent = |b: u8| matches!(b, b'e' | b'E' | b'p' | b'P');
    let at = |i: usize| src.get(i).copied().unwrap_or(0);
    let mut i = start;
    let mut in_fraction = false;
    loop {
        let b = at(i);
        if exponent(b) {
            i += 1;
            if matches!(at(i), b'+' | b'-') {
                i += 1;
                in_fraction = true;
            }
        } else if body(b) {
            i += 1;
        } else if b == b'.' && !in_fraction && (body(at(i + 1))) {
            i += 1;
            in_fraction = true;
        } else {
            return i;
        }
    }
}

/// Checks one number token and computes its value. The error names the
/// offset of the offending byte within the token and what to write instead.
pub(crate) fn parse(token: &[u8]) -> Result<Number, (usize, String)> {
    let mut base: u32 = 10;
    let mut i = 0;
    if token.len() >= 2 && token.first() == Some(&b'0') {
        match token.get(1).copied().unwrap_or(0) {
            b'b' => base = 2,
            b'o' => base = 8,
            b'x' => base = 16,
            b'B' | b'O' | b'X' => {
                return Err((
                    1,
                    "a base prefix must be lower case: write 0x, 0o or 0b".into(),
                ));
            }
            b'.' | b'e' | b'E' => {}
            _ => {
                return Err((
                    0,
                    format!(
                        "number `{}` has a leading zero: write it without, or use 0o for octal",
                        String::from_utf8_lossy(token)
                    ),
                ));
            }
        }
        if base != 10 {
            i = 2;
        }
    }
    if token.len() == 2 && base != 10 {
        return Err((0, "expected a digit after the base prefix".into()));
    }
    let mut underscore = false;
    let mut period = false;
    let mut special = 0u8;
    let mut exponent = false;
    let mut float = false;
    let mut value: Option<u128> = Some(0);
    while let Some(&c) = token.get(i) {
        let here = i;
        i += 1;
        match c {
            b'_' => {
                if (here == 2 && base != 10) || special != 0 {
                    return Err((here, "expected a digit before `_`".into()));
                }
                if underscore {
                    return Err((here, "repeated digit separator `__`: write one `_`".into()));
                }
                underscore = true;
                continue;
            }
            b'e' | b'E' if base == 10 => {
                check_exponent(here, exponent, underscore)?;
                float = true;
                special = c;
                exponent = true;
                continue;
            }
            b'p' | b'P' if base == 16 => {
                if here == 2 {
                    return Err((0, "expected a digit after the base prefix".into()));
                }
                check_exponent(here, exponent, underscore)?;
                float = true;
                special = c;
                exponent = true;
                continue;
            }
            b'.' => {
                if exponent {
                    return Err((here, "unexpected `.` after the exponent".into()));
                }
                if base != 10 && base != 16 {
                    return Err((1, "only decimal and hex numbers can have a fraction".into()));
                }
                if period {
                    return Err((here, "a number has at most one `.`".into()));
                }
                if underscore {
                    return Err((here, "expected a digit before `.`".into()));
                }
                float = true;
                period = true;
                special = c;
                continue;
            }
            b'+' | b'-' => {
                let allowed = matches!(special, b'p' | b'P')
                    || (matches!(special, b'e' | b'E') && base == 10);
                if !allowed {
                    return Err((
                        here,
                        format!("sign `{}` can only follow an exponent", c as char),
                    ));
                }
                special = c;
                continue;
            }
            _ => {}
        }
        let digit = match c {
            b'0'..=b'9' => u32::from(c - b'0'),
            b'a'..=b'z' => u32::from(c - b'a') + 10,
            b'A'..=b'Z' => u32::from(c - b'A') + 10,
            _ => {
                return Err((
                    here,
                    format!("invalid character `{}` in a number", c as char),
                ));
            }
        };
        if digit >= base {
            return Err((
                here,
                format!("invalid digit `{}` for {}", c as char, base_name(base)),
            ));
        }
        if exponent && digit >= 10 {
            return Err((
                here,
                format!("invalid digit `{}` in an exponent", c as char),
            ));
        }
        underscore = false;
        special = 0;
        if !float {
            value = value
                .and_then(|v| v.checked_mul(u128::from(base)))
                .and_then(|v| v.checked_add(u128::from(digit)));
        }
    }
    if underscore {
        return Err((
            token.len().saturating_sub(1),
            "trailing digit separator `_`".into(),
        ));
    }
    if special != 0 {
        return Err((
            token.len().saturating_sub(1),
            "expected a digit at the end of the number".into(),
        ));
    }
    if float {
        let text: String = token
            .iter()
            .filter(|b| **b != b'_')
            .map(|b| *b as char)
            .collect();
        let value = if base == 16 {
            hex_float(text.get(2..).unwrap_or(""))
        } else {
            text.parse::<f64>().ok()
        };
        return value
            .map(Number::Float)
            .ok_or_else(|| (0, "this float literal cannot be read".to_string()));
    }
    Ok(Number::Int(value))
}

fn check_exponent(here: usize, exponent: bool, underscore: bool) -> Result<(), (usize, String)> {
    if exponent {
        return Err((here, "a number has at most one exponent".into()));
    }
    if underscore {
        return Err((here, "expected a digit before the exponent".into()));
    }
    Ok(())
}

fn base_name(base: u32) -> &'static str {
    match base {
        2 => "a binary number",
        8 => "an octal number",
        16 => "a hex number",
        _ => "a decimal number",
    }
}

/// The value of a hex float body (`1.8p3`, `.8`, `1p-2`), underscores removed.
fn hex_float(body: &str) -> Option<f64> {
    let (mantissa, exponent) = match body.find(['p', 'P']) {
        Some(at) => (body.get(..at)?, body.get(at + 1..)?.parse::<i32>().ok()?),
        None => (body, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut value = 0f64;
    for c in whole.chars() {
        value = value * 16.0 + f64::from(c.to_digit(16)?);
    }
    let mut scale = 1.0 / 16.0;
    for c in fraction.chars() {
        value += f64::from(c.to_digit(16)?) * scale;
        scale /= 16.0;
    }
    Some(value * 2f64.powi(exponent))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> Number {
        assert_eq!(token_end(s.as_bytes(), 0), s.len(), "token extent of {s}");
        parse(s.as_bytes()).unwrap_or_else(|e| panic!("{s}: {e:?}"))
    }

    fn refused(s: &str) {
        let end = token_end(s.as_bytes(), 0);
        assert!(
            end < s.len() || parse(s.as_bytes()).is_err(),
            "{s} should be refused"
        );
    }

    #[test]
    fn values() {
        assert_eq!(ok("0"), Number::Int(Some(0)));
        assert_eq!(ok("1_000"), Number::Int(Some(1000)));
        assert_eq!(ok("0x1F"), Number::Int(Some(31)));
        assert_eq!(ok("0o17"), Number::Int(Some(15)));
        assert_eq!(ok("0b101"), Number::Int(Some(5)));
        assert_eq!(ok("0x1e3"), Number::Int(Some(0x1e3)));
        assert_eq!(ok("1.5e3"), Number::Float(1500.0));
        assert_eq!(ok("1.e3"), Number::Float(1000.0));
        assert_eq!(ok("0x1.8p3"), Number::Float(12.0));
        assert_eq!(ok("0x.8"), Number::Float(0.5));
        assert_eq!(ok("0x1p-2"), Number::Float(0.25));
        assert_eq!(ok("1e999"), Number::Float(f64::INFINITY));
        assert_eq!(
            ok("123456789012345678901234567890123456789012"),
            Number::Int(None)
        );
    }

    #[test]
    fn refusals_match_zig() {
        for s in [
            "01", "00", "0_1", "1__0", "1_", "0X1F", "0x_1F", "0x1F_", "0o8", "0b2", "0b_1",
            "1.5e", "1.5f", "0x1e+3", "1p3", "1e3.5", "0o1.5", "0b1.1", "0o1e3", "1_e3", "1e_3",
            "0xp3", "1.5e-_3", "1.5e3e3", "0x", "0o", "0b", "1._5", "1_.5", "01.5",
        ] {
            refused(s);
        }
    }
}
