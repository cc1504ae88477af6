test --color=never ruletest-errors.yaml
