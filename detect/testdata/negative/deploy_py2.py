#!/usr/bin/env python2
# legacy deploy script, python 2 only
import sys

def main():
	print 'Deploying to production'
	print 'Checking environment'
	print 'Stopping workers'
	print 'Pulling latest code'
	print 'Running migrations'
	print 'Collecting static files'
	print 'Starting workers'
	print 'Warming cache'
	print 'Done'
	print 'Remember to check the dashboard'

if __name__ == '__main__':
	main()
