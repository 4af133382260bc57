//! A run's live-web settings: what every campaign it creates (rollouts, evaluations,
//! baselines) does with the web. Record the run's traffic to replay it later, replay a
//! recording instead of the network (a run on the web as it was), keep to some domains,
//! or score pages that turn the agent away. The campaigns take them as their own
//! (`engine::CampaignSpec`), so the rules and errors are the engine's.

use engine::CampaignSpec;
use serde::{Deserialize, Serialize};

/// See the module documentation. Absent: live traffic, any domain, blocks detected.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunWeb {
    /// Every campaign records its pages' exchanges into a recording with its id (the
    /// workers' browsers must capture traffic: `--capture-traffic`).
    #[serde(default)]
    pub record: bool,
    /// Every campaign answers its pages' requests from this recording (a recording
    /// campaign's id or an imported HAR's), each episode from its counterpart's exchanges
    /// when the recording has one (same task and rollout), else from the whole recording.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<uuid::Uuid>,
    /// What a replay does with a request the recording lacks: `fail` (default),
    /// `not_found` or `network`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_unmatched: Option<String>,
    /// Domains the pages may load documents from (each with its subdomains).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_domains: Vec<String>,
    /// Whether a page that turns the agent away ends its episode as blocked (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detect_blocks: Option<bool>,
}

impl RunWeb {
    /// Whether the settings are the defaults (then the config leaves them out).
    pub fn is_default(&self) -> bool {
        *self == RunWeb::default()
    }

    /// Puts the settings into a campaign of the run.
    pub fn apply(&self, spec: &mut CampaignSpec) {
        spec.record = Some(self.record);
        spec.replay = self.replay;
        spec.replay_unmatched = self.replay_unmatched.clone();
        spec.allowed_domains = match self.allowed_domains.is_empty() {
            true => None,
            false => Some(self.allowed_domains.clone()),
        };
        spec.detect_blocks = self.detect_blocks;
    }

    /// The first problem, as `web.<field>: <why>`, by the rules a campaign is held to.
    pub fn validate(&self) -> Result<(), String> {
        const PROBE: &str = "probe";
        let mut spec = CampaignSpec {
            policy: Some(PROBE.into()),
            ..Default::default()
        };
        self.apply(&mut spec);
        let Err(errors) = spec.validate(&[PROBE.to_string()]) else {
            return Ok(());
        };
        let ours = [
            "record",
            "replay",
            "replay_unmatched",
            "allowed_domains",
            "detect_blocks",
        ];
        match errors.iter().find(|e| {
            let field = e.field.split('[').next().unwrap_or_default();
            ours.contains(&field)
        }) {
            Some(e) => Err(format!("web.{}: {}", e.field, e.message)),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_campaigns_take_its_web_settings_and_bad_ones_name_their_field() {
        let web = RunWeb {
            replay: Some(uuid::Uuid::nil()),
            replay_unmatched: Some("not_found".into()),
            allowed_domains: vec!["Shop.Example".into()],
            detect_blocks: Some(false),
            ..Default::default()
        };
        assert_eq!(web.validate(), Ok(()));
        let mut spec = CampaignSpec::default();
        web.apply(&mut spec);
        assert_eq!(spec.replay, Some(uuid::Uuid::nil()));
        assert_eq!(spec.detect_blocks, Some(false));
        assert_eq!(spec.allowed_domains, Some(vec!["Shop.Example".into()]));
        let both = RunWeb {
            record: true,
            replay: Some(uuid::Uuid::nil()),
            ..Default::default()
        };
        assert!(both.validate().unwrap_err().starts_with("web.record:"));
        let unmatched = RunWeb {
            replay: Some(uuid::Uuid::nil()),
            replay_unmatched: Some("maybe".into()),
            ..Default::default()
        };
        assert!(
            unmatched
                .validate()
                .unwrap_err()
                .starts_with("web.replay_unmatched:")
        );
        let domain = RunWeb {
            allowed_domains: vec!["ok.example".into(), "bad domain".into()],
            ..Default::default()
        };
        assert!(
            domain
                .validate()
                .unwrap_err()
                .starts_with("web.allowed_domains[1]:")
        );
        assert!(RunWeb::default().is_default());
        assert_eq!(RunWeb::default().validate(), Ok(()));
    }
}
