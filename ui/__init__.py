"""The portal: `runway ui` (issue #41), Flask with server-rendered Jinja and htmx over the same
functions `validate`, `explain`, `render` and `gateway-plan` call. docs/ui.md describes it."""
