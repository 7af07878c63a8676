from cudacmk._cudacmk import add_one, devices  # noqa: F401
