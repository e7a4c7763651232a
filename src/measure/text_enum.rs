//! `text_enum!`: a closed set of states that travels as text (runs.db columns, JSON, the command
//! line) but is an enum everywhere inside: `as_str`, `ALL`, `Display`, `FromStr` with an error
//! that lists what is accepted, and serde under the same names.

/// Declares `pub enum $name { $variant = "text", ... }` with its text conversions.
macro_rules! text_enum {
    ($(#[$meta:meta])* pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The name stored in runs.db and printed.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;

            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($text => Ok($name::$variant),)+
                    other => Err(format!(
                        "{other:?}: expected one of {}",
                        [$($text),+].join(", ")
                    )),
                }
            }
        }
    };
}

pub(crate) use text_enum;

#[cfg(test)]
mod tests {
    text_enum! {
        pub enum Colour { Red = "red", DarkBlue = "dark-blue" }
    }

    #[test]
    fn round_trips_and_lists_the_choices() {
        for c in Colour::ALL {
            assert_eq!(c.as_str().parse::<Colour>(), Ok(*c));
            assert_eq!(serde_json::to_string(c).ok(), Some(format!("\"{c}\"")));
        }
        let err = "green".parse::<Colour>().err().unwrap_or_default();
        assert_eq!(err, "\"green\": expected one of red, dark-blue");
    }
}
