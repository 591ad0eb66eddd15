//! `.skills` of `chock.zon` and `config.zon`: which skill layers a session
//! lists, and how many bytes of one skill's file a read returns. Either
//! file may narrow what the other allows and neither can widen it: the
//! layers listed are those both name, the bound the smaller. Whether a
//! skill may be read at all is `skill.read.<layer>`, decided at the read.
//!
//! ```zon
//! .skills = .{ .layers = .{ .operator, .project }, .max_bytes = "128KiB" },
//! ```

use chock_zon::Spanned;
use serde::Deserialize;

use crate::ByteSize;
use crate::{ConfigError, Source};

/// The bytes of one skill file a read returns when no file says.
pub const DEFAULT_SKILL_BYTES: u64 = 256 << 10;
/// The most `.max_bytes` may say.
pub const MAX_SKILL_BYTES: u64 = 4 << 20;

/// Where a skill came from: the last label of `skill.read.<layer>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(
    rename_all = "snake_case",
    expecting = "a skill layer: `.operator`, `.project` or `.packaged`"
)]
pub enum SkillLayer {
    /// `$XDG_CONFIG_HOME/chock/skills/`: what the person put there.
    Operator,
    /// The project's skills folder, `.agents/skills/`.
    Project,
    /// Shipped inside an installed policy package.
    Packaged,
}

impl SkillLayer {
    /// Every layer, in the order they are listed.
    pub const ALL: [SkillLayer; 3] = [
        SkillLayer::Operator,
        SkillLayer::Project,
        SkillLayer::Packaged,
    ];

    /// The layer as the action and the listing spell it.
    pub fn label(self) -> &'static str {
        match self {
            SkillLayer::Operator => "operator",
            SkillLayer::Project => "project",
            SkillLayer::Packaged => "packaged",
        }
    }

    /// The layer its label names.
    pub fn from_label(label: &str) -> Option<SkillLayer> {
        SkillLayer::ALL.into_iter().find(|l| l.label() == label)
    }

    /// The action a read of one of its skills is decided under.
    pub fn action(self) -> String {
        chock_names::skill_read(self.label())
    }
}

/// The `.skills` settings as they hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillSettings {
    /// The layers listed and readable, in [`SkillLayer::ALL`]'s order.
    pub layers: Vec<SkillLayer>,
    /// The most bytes of one file a read returns.
    pub max_bytes: u64,
}

impl Default for SkillSettings {
    fn default() -> Self {
        SkillSettings {
            layers: SkillLayer::ALL.to_vec(),
            max_bytes: DEFAULT_SKILL_BYTES,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "the `.skills` block: `.{ .layers = .{ .operator, .project, .packaged }, .max_bytes = \"256KiB\" }`"
)]
pub struct SkillsFields {
    layers: Option<Vec<SkillLayer>>,
    max_bytes: Option<ByteSize>,
}

/// One file's `.skills`, checked.
#[derive(Debug, Clone, Default)]
pub struct SkillsBlock {
    layers: Option<Vec<SkillLayer>>,
    max_bytes: Option<u64>,
}

pub fn read_skills(
    source: &Source<'_>,
    block: Option<Spanned<SkillsFields>>,
) -> Result<SkillsBlock, ConfigError> {
    let Some(Spanned { span, value }) = block else {
        return Ok(SkillsBlock::default());
    };
    let max_bytes = value.max_bytes.map(|b| b.0);
    if max_bytes.is_some_and(|b| b == 0 || b > MAX_SKILL_BYTES) {
        return Err(source.error(
            span,
            format!(".skills.max_bytes is from 1 byte to {MAX_SKILL_BYTES} bytes (4MiB)"),
        ));
    }
    if let Some(layers) = &value.layers {
        for (i, layer) in layers.iter().enumerate() {
            if layers[..i].contains(layer) {
                return Err(source.error(
                    span,
                    format!(".skills.layers names `.{}` twice: keep one", layer.label()),
                ));
            }
        }
    }
    Ok(SkillsBlock {
        layers: value.layers,
        max_bytes,
    })
}

/// What the operator's and the project's `.skills` leave: the layers both
/// name, the smaller bound.
pub fn settle(blocks: &[&SkillsBlock]) -> SkillSettings {
    let mut settings = SkillSettings::default();
    for block in blocks {
        if let Some(layers) = &block.layers {
            settings.layers.retain(|l| layers.contains(l));
        }
        if let Some(bytes) = block.max_bytes {
            settings.max_bytes = settings.max_bytes.min(bytes);
        }
    }
    settings
}
