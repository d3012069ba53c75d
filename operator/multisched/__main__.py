from multisched.cli import entry

entry()
