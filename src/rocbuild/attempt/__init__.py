"""--try: build, match a failure against the trap catalogue, write the fix into the recipe, build again."""
