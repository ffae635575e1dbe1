"""Examples that tests keep true: a policy file and a custom agent that runs offline."""
