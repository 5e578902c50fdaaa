//! Value parsers that accept any text (a protocol spec with parameters, a workload
//! with options) but tell clap the known names, so that the shell completions
//! (`meridian completions SHELL`) offer them. The value is checked later, by the code
//! that builds the protocol or workload, with its own errors. `--topology` has no
//! such list: the generated scripts offer only the listed names where a list exists,
//! and a topology is as often a TOML file, whose path the shell completes.

use clap::builder::{PossibleValue, TypedValueParser};

/// Any UTF-8 text, completed from `names`.
#[derive(Clone, Copy, Debug)]
pub struct Named(pub &'static [&'static str]);

impl TypedValueParser for Named {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.0.iter().map(|n| PossibleValue::new(*n))))
    }
}

/// Protocol names.
pub const PROTOCOLS: Named = Named(&meridian_protocols::PROTOCOLS);
/// Workload names.
pub const WORKLOADS: Named = Named(&meridian_workload::WORKLOADS);
/// Protocol names and `all` (campaigns).
pub const CAMPAIGN_PROTOCOLS: Named = Named(&CAMPAIGN);

const CAMPAIGN: [&str; meridian_protocols::PROTOCOLS.len() + 1] = {
    let mut out = ["all"; meridian_protocols::PROTOCOLS.len() + 1];
    let mut i = 0;
    while i < meridian_protocols::PROTOCOLS.len() {
        out[i + 1] = meridian_protocols::PROTOCOLS[i];
        i += 1;
    }
    out
};
