"""An example multisched plugin package."""
