"""An admitted gang followed to completion or rolled back: transitions written ahead,
the status they leave, refusals avoided, pods let go."""
