test --color=never ruletest-wrong.yaml
