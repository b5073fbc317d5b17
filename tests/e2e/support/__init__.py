"""What the e2e tests share: fixtures, scenario helpers and the watch that checks gangs."""
