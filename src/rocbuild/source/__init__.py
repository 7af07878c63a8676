"""Where a build's source tree comes from: git through a mirror, a copied folder, an sdist."""
