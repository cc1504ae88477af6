test --color=never ruletest-unknown-alert.yaml
