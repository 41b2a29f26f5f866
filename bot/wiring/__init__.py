"""The composition root: `app` builds every part from the Settings (nothing else wires
adapters), `channels` and `deployers` build each channel and deployer by kind, `sign_in` the
sign-in links, `children` the processes' event loop and child processes."""

__all__ = ["app", "channels", "children", "deployers", "sign_in"]
